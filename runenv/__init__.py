"""The run's context from the environment: run id, reports directory, configuration, settings errors."""
