// Precompiled for every test target: GoogleTest and GoogleMock.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
