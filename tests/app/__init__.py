"""Pages under Streamlit's AppTest, and the served app over its protocol."""
