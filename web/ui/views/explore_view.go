package views

// ExplorePage is the timeline explorer for any window.
type ExplorePage struct {
	From, To   string // RFC 3339, for the form
	State      State
	Chips      []Link
	Clear      string
	Options    map[string][]string // known values per dimension, for the inputs' datalists
	Timeline   Timeline
	Events     []ExploreEvent
	MoreEvents int
}

// ExploreEvent is one event in the explorer's list.
type ExploreEvent struct {
	Time, Kind, Scope, Summary, Source string
}
