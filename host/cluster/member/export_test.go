package member

// KeepKeysInMemory makes m keep the idempotency keys of forwarded tasks
// in memory only, as before they were stored: for the benchmark that
// measures what storing them costs. Call it before Join.
func KeepKeysInMemory(m *Member) {
	m.mu.Lock()
	m.memoryOnly = true
	m.mu.Unlock()
}

// LocateRun finds the run id names among hosts' runs, as Member.Run does
// in the cluster's run listing.
var LocateRun = locateRun
