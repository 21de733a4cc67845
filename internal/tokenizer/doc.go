// Package tokenizer turns text into the token ids of a byte-level BPE language model and back,
// read from the model's Hugging Face tokenizer.json, and renders the chat template the scorer and
// the in-process model share (one implementation for both paths: Qwen3's, ChatTemplate).
//
// What tokenizer.json may hold is what Qwen3's (and GPT-2-style byte-level models') files use:
//
//   - normalizer: null or NFC;
//   - pre_tokenizer: ByteLevel, or a Sequence of Split steps (a Regex or String pattern,
//     behavior Isolated, invert false) ending with ByteLevel (add_prefix_space and use_regex
//     honoured); Split regexes run on github.com/dlclark/regexp2 (look-ahead, as Oniguruma) with
//     a bounded match time, so a pattern that backtracks without end is an error of Encode naming
//     the file and the field, never a hang;
//   - model: BPE with vocab and merges (each "a b" or ["a", "b"]), ignore_merges honoured, no
//     dropout, unk_token, byte_fallback or subword prefix/suffix;
//   - added_tokens: special or not, matched before normalization (normalized false) or after it
//     (normalized true), leftmost-longest, with their single_word, lstrip and rstrip flags as the
//     Hugging Face library applies them;
//   - post_processor: null or ByteLevel (it moves offsets only); decoder: ByteLevel;
//     truncation and padding: null.
//
// Anything else is refused at load with an error naming the file, the field and its value, as is
// an inconsistent file (a merge whose parts or result are not in the vocab, a byte missing from
// the byte-level alphabet, an added token whose id another token holds). Encode caches the ids of
// repeated pre-tokens and merges with a rank map.
//
// From tokenizer_config.json (LoadConfig) it reads the special tokens (eos, pad, bos) and
// recognises the chat template by its sha256: only Qwen3's template (ChatTemplate Qwen3: a system
// and a user message, the generation prompt with thinking off) is implemented; this is not a
// Jinja engine.
//
// It is a leaf: it must not import another package of the module, read anything but the files it
// is handed, or call a server (the scorer's token ids still come from the server it scores on).
package tokenizer
