package pgstore

// RecallWrites returns how many elided results s wrote to the database,
// and in how many statements.
func RecallWrites(s *Store) (entries, calls int) { return s.recall.Writes() }
