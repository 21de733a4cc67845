package config

// Sim holds the parameters of the simulated world (internal/sim documents the model).
type Sim struct{}

// sim checks the simulated world's parameters.
func (k *checker) sim(Sim) {}
