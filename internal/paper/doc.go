// Package paper holds the numbers the paper measured that the program prints beside its own: the
// scores of Table 2 (tab:ablation) for every baseline, ablation and the full method. They are facts
// copied from the paper; nothing is fitted to the method's rows.
//
// It must not import any other package of the module: every layer may read it.
package paper
