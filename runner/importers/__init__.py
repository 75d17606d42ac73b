"""Chat export parsers: files in, ParsedMessage records out."""
