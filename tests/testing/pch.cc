// The object whose compile builds tests/testing/pch.h for every test target (REUSE_FROM).
