"""Bad input never crashes (issue 15). A package, so that its conftest does not shadow the others' `conftest`."""
