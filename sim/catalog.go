package sim

// modelSpec is one entry of the built-in catalog: what a model costs on a
// reference GPU and how it is served. Numbers are of the order real
// serving stacks show (dynamic batching à la Triton); what matters is that
// they are physically consistent with each other, not any one vendor.
type modelSpec struct {
	name  string
	tier  string // realtime | search | batch
	entry string // gateway route
	slo   float64

	rps      float64 // mean requests/s for the whole model at traffic scale 1
	replicas int

	// exec(b) = execBase · (1 + execPerItem·(b−1)) seconds on the reference
	// GPU: batching amortises the fixed cost, so throughput grows with b.
	execBase    float64
	execPerItem float64
	execSigma   float64 // lognormal spread of one batch's exec time
	maxBatch    int
	window      float64 // max queue delay (batch window), seconds

	post      float64 // median postprocess (CPU) seconds
	cpuPerReq float64 // host CPU seconds per request (pre + post + I/O)
	payload   float64 // request bytes received
	calls     bool    // calls the downstream dependency
	leastReq  bool    // gateway balances by least outstanding requests (else random)

	weightsMiB float64 // GPU memory for weights
	actMiB     float64 // GPU memory per in-flight batch item
	loadSecs   float64 // time to pull and load weights before readiness
}

// catalog is the model zoo in the order Options.Models takes them. The
// first two cover a caller of the dependency and a model that does not, so
// the small fleet can inject every scenario. One model a line: a table
// reads best as rows.
var catalog = []modelSpec{
	{name: "chat-8b", tier: "realtime", entry: "/v1/chat/completions", slo: 0.9, rps: 17, replicas: 3, execBase: 0.12, execPerItem: 0.5, execSigma: 0.10, maxBatch: 8, window: 0.010, post: 0.002, cpuPerReq: 0.006, payload: 4 << 10, calls: true, leastReq: true, weightsMiB: 16400, actMiB: 2200, loadSecs: 55},
	{name: "embed-small", tier: "search", entry: "/v1/embeddings", slo: 0.15, rps: 46, replicas: 2, execBase: 0.02, execPerItem: 0.7, execSigma: 0.08, maxBatch: 16, window: 0.004, post: 0.0008, cpuPerReq: 0.0015, payload: 2 << 10, calls: false, leastReq: false, weightsMiB: 1300, actMiB: 40, loadSecs: 20},
	{name: "rerank-base", tier: "search", entry: "/v1/rerank", slo: 0.25, rps: 50, replicas: 3, execBase: 0.03, execPerItem: 0.6, execSigma: 0.09, maxBatch: 8, window: 0.005, post: 0.0012, cpuPerReq: 0.003, payload: 24 << 10, calls: true, leastReq: true, weightsMiB: 2200, actMiB: 180, loadSecs: 25},
	{name: "vision-detect", tier: "realtime", entry: "/v1/vision/detect", slo: 0.4, rps: 38, replicas: 3, execBase: 0.05, execPerItem: 0.45, execSigma: 0.10, maxBatch: 8, window: 0.008, post: 0.004, cpuPerReq: 0.012, payload: 260 << 10, calls: false, leastReq: false, weightsMiB: 3100, actMiB: 900, loadSecs: 30},
	{name: "asr-whisper", tier: "realtime", entry: "/v1/audio/transcriptions", slo: 1.5, rps: 4.8, replicas: 2, execBase: 0.25, execPerItem: 0.5, execSigma: 0.12, maxBatch: 4, window: 0.020, post: 0.003, cpuPerReq: 0.03, payload: 480 << 10, calls: false, leastReq: true, weightsMiB: 3200, actMiB: 1400, loadSecs: 35},
	{name: "summarize-batch", tier: "batch", entry: "/v1/batch/summarize", slo: 6, rps: 3, replicas: 2, execBase: 0.8, execPerItem: 0.15, execSigma: 0.12, maxBatch: 16, window: 0.2, post: 0.006, cpuPerReq: 0.02, payload: 40 << 10, calls: true, leastReq: false, weightsMiB: 26000, actMiB: 1600, loadSecs: 80},
}

// tenantNames are the fleet's customers, largest first.
var tenantNames = []string{"t-northwind", "t-contoso", "t-initech", "t-tyrell", "t-cyberdyne", "t-vandelay", "t-soylent", "t-oscorp"}

// gpuType is a node pool's accelerator. speed multiplies exec time
// (reference A100 = 1).
type gpuType struct {
	name   string
	memMiB float64
	speed  float64
	short  string // in node names
	cpus   int
	memGiB float64
}

var (
	gpuA100 = gpuType{name: "NVIDIA A100-SXM4-80GB", memMiB: 81920, speed: 1.0, short: "a100", cpus: 16, memGiB: 512}
	gpuL40S = gpuType{name: "NVIDIA L40S", memMiB: 46068, speed: 1.2, short: "l40s", cpus: 16, memGiB: 256}
)

// gpusPerNode is the number of GPUs every node carries.
const gpusPerNode = 4

// namespace is where every model is deployed.
const namespace = "inference"

// dependencyName is the downstream service some models call.
const dependencyName = "vector-db"
