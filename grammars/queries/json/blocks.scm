[(object) (array)] @block
