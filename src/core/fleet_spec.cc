// The fleet spec parser: not yet written.
