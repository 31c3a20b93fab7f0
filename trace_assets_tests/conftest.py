pytest_plugins = ["trace_assets_tests.s3_fixtures", "trace_assets_tests.hub_server"]
