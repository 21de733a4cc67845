// Package gpu holds the gomlx models and graphs of the pipeline (policy, value head, residual
// head, AnchorTB and the other objectives) and the choice of gomlx backend: the pure-Go
// simplego backend on CPU, or XLA through a PJRT plugin when one is present. On simplego the
// update's passes run as plain-Go kernels instead (native*.go: the same functions over each
// decision's legal actions, on every core); Score and Predict, what rollouts read, are graphs on
// every backend.
//
// It must not read or write pipeline files; stages pass it tensors and take tensors back.
package gpu
