// runtime layer
