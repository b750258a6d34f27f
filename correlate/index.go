package correlate

// smallIndex numbers strings densely (0, 1, 2, … in order of first sight).
// Sample dimensions usually have a handful of values, and comparing with a
// few known strings is cheaper than hashing; past 16 values a map takes
// over.
type smallIndex struct {
	vals []string
	m    map[string]int
}

// get returns s's number, adding s if it is new.
func (x *smallIndex) get(s string) int {
	if x.m == nil {
		for i, v := range x.vals {
			if v == s {
				return i
			}
		}
		x.vals = append(x.vals, s)
		if len(x.vals) > 16 {
			x.m = make(map[string]int, 64)
			for i, v := range x.vals {
				x.m[v] = i
			}
		}
		return len(x.vals) - 1
	}
	if i, ok := x.m[s]; ok {
		return i
	}
	x.vals = append(x.vals, s)
	x.m[s] = len(x.vals) - 1
	return len(x.vals) - 1
}
