"""Source rewrites: rules as data (rules/*.toml), a generic engine, named Python transforms."""
