//! Embedding and embedding_bag (ATen's Embedding.cpp, EmbeddingBag.cpp), one_hot.
