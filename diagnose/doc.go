// Package diagnose runs Waterline's analyses as a service: it loads an
// incident window's curves, events and samples from the store, runs
// correlate.Analyze, and stores the versioned result; it re-analyses when
// new data for the window arrives; and its Detector watches latency curves
// as they are pulled, records spikes and opens incidents for severe ones.
// It has no HTTP and no SQL of its own: store does the I/O, correlate the
// thinking.
package diagnose
