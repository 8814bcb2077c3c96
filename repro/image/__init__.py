"""Stack images: render (pure), build, verify, lock and ship them."""
