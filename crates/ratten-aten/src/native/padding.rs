//! Padding (ATen's PadNd.cpp, ReflectionPad.cpp, ReplicationPadding.cpp).
