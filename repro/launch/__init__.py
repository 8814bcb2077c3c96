"""Launch: sweep points, launch plans (pure), and the runtimes that execute them."""
