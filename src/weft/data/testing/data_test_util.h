// Helpers for the data layer's tests: drain a dataset into a vector, read scalar components.
// Test-only; not thread-safe beyond what the iterators themselves promise.
#pragma once

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "weft/data/dataset.h"

namespace weft::data::testing {

// Every element of `dataset`, or the first error. At most `limit` elements are read so a broken
// Repeat cannot hang a test.
inline StatusOr<std::vector<Element>> Collect(const Dataset& dataset, int64_t limit = 100000) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> iterator, dataset.MakeIterator());
  std::vector<Element> out;
  for (int64_t i = 0; i < limit; ++i) {
    Element element;
    bool end = false;
    WEFT_RETURN_IF_ERROR(iterator->GetNext(&element, &end));
    if (end) return out;
    out.push_back(std::move(element));
  }
  return Internal("more than ", limit, " elements");
}

// Component `component` of each element, each a scalar of type T.
template <typename T>
std::vector<T> Scalars(const std::vector<Element>& elements, size_t component = 0) {
  std::vector<T> out;
  for (const Element& element : elements) {
    EXPECT_EQ(element.at(component).NumElements(), 1);
    out.push_back(element.at(component).flat<T>()[0]);
  }
  return out;
}

// A dataset of int64 scalars 0 .. n-1.
inline Dataset Range(int64_t n) {
  std::vector<int64_t> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = i;
  return Dataset::FromTensors({Tensor::FromVector(values)});
}

}  // namespace weft::data::testing
