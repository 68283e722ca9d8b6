"""Source rewrites: rules as data (a folder each, rules/<id>/rule.toml), a generic engine, named Python transforms."""
