"""The lessons' figures (numpy and plotly only, like the rest of viz/)."""
