// Placeholder until the BPE lands: keeps the lm layer a library.
#include "lm/gpt2_tokenizer.h"
