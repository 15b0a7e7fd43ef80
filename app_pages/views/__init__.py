"""The twelve pages that look at a model's attention (Start, Translate, Explore, ... Shapes and
costs): thin scripts that read the frame's settings, ask the cache, and draw with viz/."""
