"""Store: durable run state in one SQLite database per run, and where runs live on disk.

Owns the schema and migrations, the single writer connection (`db.Writer`, used only by
the engine's control loop), read-only access for views (`reader.Reader`), and the state
home layout. Imports nothing else of flamechase except `errors`.
"""
