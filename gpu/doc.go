// Package gpu holds the gomlx models and graphs of the pipeline (policy, value head, residual
// head, AnchorTB and the other objectives) and the choice of gomlx backend: the pure-Go
// backend on CPU (configured as simplego; gomlx's github.com/gomlx/compute/gobackend, registered
// as "go"), or XLA through a PJRT plugin when one is present (github.com/gomlx/go-xla, with -tags
// xla). On simplego scoring, prediction and the update's passes run as plain-Go kernels instead
// (native*.go: the same functions over each decision's legal actions, on every core; selected in
// kernels.go); the graphs serve XLA.
//
// It must not read or write pipeline files; stages pass it tensors and take tensors back.
package gpu
