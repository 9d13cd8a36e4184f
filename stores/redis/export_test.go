package redisstore

// RecallWrites returns how many elided results s wrote to Redis, and in
// how many calls.
func RecallWrites(s *Store) (entries, calls int) { return s.recall.Writes() }
