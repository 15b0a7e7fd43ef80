"""The served app in headless Chromium."""
