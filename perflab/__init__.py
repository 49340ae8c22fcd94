"""perflab: judge Java framework benchmark runs."""
