// Precompiled once for every library and test target with a few sources (cmake/weft.cmake): the
// standard and protobuf headers nearly every translation unit parses. Only third-party headers, so
// that editing Weft's own headers never rebuilds a precompiled header.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <google/protobuf/generated_message_reflection.h>
#include <google/protobuf/map.h>
#include <google/protobuf/message.h>
#include <google/protobuf/repeated_field.h>
