pytest_plugins = ["trace_assets_tests.s3_fixtures"]
