// Package learner connects the pipeline's files to gpu.Learner (the policy adapter, heads,
// published value head, optimizer state and versions):
//
//   - the checkpoint: one file per step at step-NNNNNN/update/checkpoint/learner.arrow (the
//     checkpoint table). Step 0's is the initial learner written by `evosteer init`; step k's is
//     written by step k's update; rollout, rescore and update of step k+1 load it;
//   - the network inputs stored in decision rows (policy_input, action_inputs, prior_logits),
//     so that rescore and update score exactly what the rollout scored (within
//     MaxBehaviorMismatch, which rescore and the probe check);
//   - what a step leaves behind for the stages that read it: Initial (the stage writing the
//     untrained learner as a checkpoint), LatestStep, and Frozen (a step's learner and the skill
//     library after it, which evaluation and the probe play with).
//
// The learner is stored as an ordinary Arrow table rather than gomlx's checkpoint format
// (ml/model/checkpoint), whose files are named by timestamp and gzip-compressed: a resumed run
// must reproduce every output byte for byte, and every file of a run must be readable with
// `evosteer inspect` and SQL.
//
// It must not train or score anything; it only converts between the learner and its files.
package learner
