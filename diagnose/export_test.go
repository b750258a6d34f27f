package diagnose

// SetMaxAnalysisSamples lowers the analysis' sample bound for a test, so
// that a window past it needs thousands of samples, not millions.
func SetMaxAnalysisSamples(n int64) (restore func()) {
	old := maxAnalysisSamples
	maxAnalysisSamples = n
	return func() { maxAnalysisSamples = old }
}
