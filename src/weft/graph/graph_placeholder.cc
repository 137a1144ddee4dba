// graph layer: filled in by the Graph work
