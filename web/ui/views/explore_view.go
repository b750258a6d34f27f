package views

// ExplorePage is the timeline explorer for any window.
type ExplorePage struct {
	From, To string // RFC 3339, for the form: only a window the user chose
	// FromHint and ToHint are the window shown when the URL names none
	// (the last three hours, up to now): the empty fields' placeholders,
	// so that applying a filter keeps the window live rather than
	// pinning it to the moment the page was loaded.
	FromHint, ToHint string
	State            State
	Chips            []Link
	Clear            string
	Options          map[string][]string // known values per dimension, for the inputs' datalists
	Timeline         Timeline
	Events           []ExploreEvent
	MoreEvents       int
}

// ExploreEvent is one event in the explorer's list.
type ExploreEvent struct {
	Time, Kind, Scope, Summary, Source string
}
