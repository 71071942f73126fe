//! Nothing: the tests are in tests/patches.
