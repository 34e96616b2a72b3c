// Edit › Paste (docs/DESIGN.md §3.2): embeddings or a module's parameters from text a notebook
// printed, in place of the workspace's — the commands paste_embeddings and paste_parameters.
#pragma once
#include <string>

#include "engine/model_config.h"
#include "model/workspace.h"

namespace attnscope {

// Edit › Paste embeddings (the `paste_embeddings` command, docs/DESIGN.md §3.2): `text` in any of
// the text forms (parseEmbeddingsText; messages "SOURCE:LINE:COLUMN: why", SOURCE "clipboard" when
// the app read it there, "pasted text" when a command gave it) in place of the
// workspace's embeddings and tokens. Names: the text's own (a CSV's first column), else the
// workspace's when there are as many, else t1 … tT (tokenNames, as importWorkspace names them). The
// model is kept ('simple': d_out = d_in); the user's parameters must fit the pasted d_in. Returns
// what was done, for the user ("Pasted 6 × 3 embeddings (a printed torch tensor); …"; a torch print
// that rounds says so, roundedPrintNote).
std::string pasteEmbeddings(Workspace& ws, const std::string& text, const std::string& source,
                            const Limits& limits = {});

// Edit › Paste parameters (the `paste_parameters` command): a printed state_dict (or its JSON) in
// place of those tensors of the module (setParameterTensors; buffers such as the causal mask left
// out); the others keep their values. The step stays, with its seed, dropout and training/eval
// mode; what the tensors say is taken (DESIGN §2.4): d_out from their shapes, qkv_bias from their
// biases (false when they name every projection and no bias), the wrapper's num_heads from
// heads.N. MultiHeadAttention's num_heads is kept when it divides d_out (a note says so), else the
// paste is refused with how to set it first. Each name and shape is checked against the module.
// Messages "SOURCE: why". Returns what was done, for the user.
std::string pasteParameters(Workspace& ws, const std::string& text, const std::string& source,
                            const Limits& limits = {});

}  // namespace attnscope
