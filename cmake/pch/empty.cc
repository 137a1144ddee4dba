// The one source of each precompiled-header target (cmake/weft.cmake): it only gives the target a
// compile step, whose precompiled header the library and test targets reuse.
