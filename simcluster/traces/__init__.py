"""One parser per tool: raw text or JSON in, typed measurements out."""
