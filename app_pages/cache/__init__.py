"""What the server keeps between reruns and sessions: loaded models, traces and pages' results,
shared between sessions, one computation at a time per session, within the server's limits."""
