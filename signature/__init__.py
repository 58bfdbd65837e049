"""A module's signature: its `@main`, its inputs' names, shapes and dtypes, and binding
numpy arrays to them."""
