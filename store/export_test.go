package store

// DB is the connection a Store runs on, for the store's own tests that
// check rows with plain SQL; nothing outside the store needs it.
func (s *Store) DB() DB { return s.db }
