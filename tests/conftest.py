def pytest_addoption(parser):
    parser.addoption("--update-goldens", action="store_true", help="rewrite tests/goldens/*.json from the current program")
