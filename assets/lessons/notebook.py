# The code cells of the chapter's notebook ("Coding Attention Mechanisms", Raschka, chapter 3), as the
# notebook writes them, in its order; "# In [N]:" starts cell N. The lesson's code boxes show these
# lines. Run top to bottom with torch, they print the notebook's tensors (the dropout cells [31] and
# [32] only with torch built with MKL, the build the notebook was printed with).

# In [1]:
import torch

# assume these are our our initial (random) 3D embedding vectors
# for the sequence "Your journey starts with one step":
inputs = torch.tensor(
    [[0.43, 0.15, 0.89], # x_1: Your
     [0.55, 0.87, 0.66], # x_2: journey
     [0.57, 0.85, 0.64], # x_3: starts
     [0.22, 0.58, 0.33], # x_4: with
     [0.77, 0.25, 0.10], # x_5: one
     [0.05, 0.80, 0.55]  # X_6: step
    ]
)

# In [2]:
# assume our query token is position 1 [index 1], "journey":
query = inputs[1]

# initiate a tensor of shape inputs.shape[0] to store weights:
attention_scores = torch.empty(inputs.shape[0])

# compute attention scores for each (query, token) pair:
for idx, x_i in enumerate(inputs):
    attention_scores[idx] = torch.dot(x_i, query)

print(attention_scores)

# In [3]:
# simple approach:
attention_scores_normed = attention_scores / attention_scores.sum()
print(f"Attention weights:\n {attention_scores}")
print(f"Normalized attention scores:\n {attention_scores_normed}")
print(f"Sum of normed attention weights: {attention_scores_normed.sum()}")

# In [4]:
# simple softmax:
def softmax_naive(x):
    return torch.exp(x) / torch.exp(x).sum(dim=0)

# apply:
attention_scores_softmax = softmax_naive(attention_scores)
print(f"Softmax attention scores:\n {attention_scores_softmax}")
print(f"Sum: {attention_scores_softmax.sum()}")

# In [5]:
torch_softmax_attn_scores = torch.softmax(attention_scores, dim=0)
print(f"PyTorch softmax weights:\n {torch_softmax_attn_scores}")
print(f"Sum: {torch_softmax_attn_scores.sum()}")

# In [6]:
# again, assume we are interested in the token at position 2 [index 1]:
query = inputs[1]

# placeholder for context vector:
context_vector = torch.zeros(query.shape)

# iterate and compute:
for i, x_i in enumerate(inputs):
    context_vector += torch_softmax_attn_scores[i]*x_i

print(context_vector)

# In [7]:
# our toy sequence has a length of 6, so let's create an empty tensor:
attention_scores = torch.empty(6, 6)

# now, loop over the entire sequence:
for i, x_i in enumerate(inputs):
    for j, x_j in enumerate(inputs):
        # attention scores tor tokens (i, j):
        attention_scores[i, j] = torch.dot(x_i, x_j)

# now, we have attention vectors for each token in the sequence:
print(attention_scores)

# In [8]:
attention_scores = inputs @ inputs.T
print(attention_scores)

# In [9]:
attention_weights = torch.softmax(attention_scores, dim=-1) # dim=-1 sets the normalization to the "last" dimension of the tensor.
print(attention_scores)
print(f"Sums: {attention_weights.sum(dim=-1)}")

# In [10]:
context_vectors = attention_weights @ inputs
print(context_vectors)

# In [11]:
# get the token embedding:
x_2 = inputs[1]

# get the embedding dimensionality:
d_in = inputs.shape[1]

# set the output embedding size (note: these are usually equal to the input dimension):
d_out = 2

# create matrices (requires_grad=False just for simplicity):
torch.manual_seed(123)

W_query = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
W_key = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
W_value = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)

# get the query, key, and value vectors for token 2:
query_2 = x_2 @ W_query
key_2 = x_2 @ W_key
value_2 = x_2 @ W_value

print(query_2)

# In [12]:
keys = inputs @ W_key
values = inputs @ W_value
print(f"Keys shape: {keys.shape}")
print(f"Values shape: {values.shape}")

# In [13]:
keys_2 = keys[1]
attn_score_22 = query_2.dot(keys_2)
print(attn_score_22)

# In [14]:
attn_scores_2 = query_2 @ keys.T
print(attn_scores_2)

# In [15]:
d_k = keys.shape[-1]
attn_weights_2 = torch.softmax(attn_scores_2 / d_k**0.5, dim=-1)
print(attn_weights_2)

# In [16]:
context_vec_2 = attn_weights_2 @ values
print(context_vec_2)

# In [17]:
import torch.nn as nn

class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()

        # query matrix:
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))

        # key matrix:
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))

        # value matrix:
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    # forward pass method:
    def forward(self, x):
        # get queries, keys, and values:
        queries = x @ self.W_query
        keys = x @ self.W_key
        values = x @ self.W_value

        # raw attention scores ('omega'):
        attn_scores = queries @ keys.T

        # scaled attention weights:
        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1]**0.5, dim=-1
        )

        # context vectors:
        context_vec = attn_weights @ values
        return context_vec

# In [18]:
torch.manual_seed(123)
sa_v1 = SelfAttention_v1(d_in, d_out)
print(sa_v1(inputs))

# In [19]:
class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        # simpler matrix math because of nn.Linear:
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)

        # attention:
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1]**0.5, dim=-1
        )

        # context vector:
        context_vec = attn_weights @ values
        return context_vec

# In [20]:
torch.manual_seed(789)
sa_v2 = SelfAttention_v2(d_in, d_out)
print(sa_v2(inputs))

# In [21]:
torch.manual_seed(123)
sa_v2_v1 = SelfAttention_v2(d_in, d_out)
sa_v2_v1_cv = sa_v2_v1(inputs)

sa_v1_v2 = SelfAttention_v1(d_in, d_out)
sa_v1_v2_cv = sa_v1_v2(inputs)

# In [22]:
# nn.Linear:
sa_v2_v1_cv

# In [23]:
# nn.Parameter:
sa_v1_v2_cv

# In [24]:
sa_v2_v1.W_query.weight = nn.Parameter(sa_v1_v2.W_query.T)
sa_v2_v1.W_key.weight = nn.Parameter(sa_v1_v2.W_key.T)
sa_v2_v1.W_value.weight = nn.Parameter(sa_v1_v2.W_value.T)

# rerun:
sa_v2_v1(inputs)

# In [25]:
queries = sa_v2.W_query(inputs)
keys = sa_v2.W_key(inputs)
attn_scores = queries @ keys.T
attn_weights = torch.softmax(
    attn_scores / keys.shape[-1]**0.5, dim=-1
)

print(attn_weights)

# In [26]:
context_length = attn_scores.shape[0]
mask_simple = torch.tril(torch.ones(context_length, context_length))
print(mask_simple)

# In [27]:
masked_simple = attn_weights*mask_simple
print(masked_simple)

# In [28]:
row_sum = masked_simple.sum(dim=-1, keepdim=True)
masked_simple_norm = masked_simple / row_sum
print(masked_simple_norm)

# In [29]:
mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
masked = attn_scores.masked_fill(mask.bool(), -torch.inf)
print(masked)

# In [30]:
attn_weights = torch.softmax(masked / keys.shape[-1]**0.5, dim=1)
print(attn_weights)

# In [31]:
torch.manual_seed(123)
dropout = torch.nn.Dropout(0.5) # dropout rate of 50% (in practice, more like 10% - 20%)
example = torch.ones(6, 6)
print(dropout(example))

# In [32]:
torch.manual_seed(123)
print(dropout(attn_weights))

# In [33]:
batch = torch.stack((inputs, inputs), dim=0)
print(batch.shape)

# In [34]:
print(batch)

# In [35]:
class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        # output dims:
        self.d_out = d_out

        # query, key, and value matrices:
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

        # dropout:
        self.dropout = nn.Dropout(dropout)

        # this buffer helps ensure our tensors are all on the same device
        self.register_buffer(
            "mask",
            torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    # forward pass:
    def forward(self, x):
        batch_size, num_tokens, d_in = x.shape

        # queries, keys, and values:
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)

        # attention:
        attn_scores = queries @ keys.transpose(1, 2) # we transpose (1, 2), because the batch size is at index 0.
        attn_scores.masked_fill_( # performed in-place
            self.mask.bool()[:num_tokens, :num_tokens], -torch.inf
        )

        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1]**0.5, dim=-1
        )

        attn_weights = self.dropout(attn_weights)

        # context vector:
        context_vec = attn_weights @ values
        return context_vec

# In [36]:
context_length = batch.shape[1]
ca = CausalAttention(d_in, d_out, context_length, 0.0)
context_vecs = ca(batch)
print(f"Context vectors shape: {context_vecs.shape}")
print(context_vecs)

# In [37]:
class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length,
                 dropout, num_heads, qkv_bias=False):
        super().__init__()

        # create multiple heads:
        self.heads = nn.ModuleList(
            [
                CausalAttention(
                    d_in, d_out, context_length, dropout, qkv_bias
                )
                for head in range(num_heads)
            ]
        )

    # forward pass:
    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)

# In [38]:
mha = MultiHeadAttentionWrapper(d_in, d_out, context_length, 0.0, num_heads=2)
context_vecs = mha(batch)
print(context_vecs)

# In [39]:
print(context_vecs.shape)

# In [40]:
class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out,
                 context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()

        # logic check:
        assert (d_out % num_heads == 0), "Error: d_out must be divisible by num_heads!"

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads # final embedding size

        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

        # linear layer for head outputs
        # (not strictly necessary, but commonly used):
        self.out_proj = nn.Linear(d_out, d_out)

        # dropout:
        self.dropout = nn.Dropout(dropout)

        # register buffer:
        self.register_buffer(
            "mask",
            torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        batch_size, num_tokens, d_in = x.shape

        # queries, keys, values
        # of shape (batch_size, num_tokens, d_out):
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)

        # split the matrices:
        queries = queries.view(batch_size, num_tokens, self.num_heads, self.head_dim)
        keys = keys.view(batch_size, num_tokens, self.num_heads, self.head_dim)
        values = values.view(batch_size, num_tokens, self.num_heads, self.head_dim)

        # transpose from (batch_size, num_tokens, num_heads, head_dim)
        # to (batch_size, num_heads, num_tokens, head_dim):
        queries = queries.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)

        # attention scores:
        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens] # mask
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1]**0.5, dim=-1
        )
        attn_weights = self.dropout(attn_weights)

        # context vectors:
        context_vec = (attn_weights @ values).transpose(1, 2) # (1, 2) --> (num_tokens, num_heads)
        context_vec = context_vec.contiguous().view( # tensor of shape (batch_size, num_tokens, num_heads, head_dim)
            batch_size, num_tokens, self.d_out
        )
        context_vec = self.out_proj(context_vec)
        return context_vec

# In [41]:
batch_size = 2
num_tokens = 6
token_embedding_dims = 3
num_heads = 2
out_dim = 2
head_dim = out_dim // num_heads

torch.manual_seed(123)
linear = nn.Linear(token_embedding_dims, out_dim, bias=False)
queries = linear(batch)

print(queries.shape) # (batch_size, num_tokens, out_dim)
print(queries)

# In [42]:
viewed_queries = queries.view(
    batch_size, num_tokens, num_heads, head_dim
)

print(viewed_queries.shape)
print(viewed_queries[0].shape)

# In [43]:
# seed:
torch.manual_seed(123)

# information from our batch of inputs:
batch_size, num_tokens, d_in = batch.shape

print(f"Batch size: {batch_size}")
print(f"Num tokens: {num_tokens}")
print(f"Input token embedding dimensions: {d_in}\n")

# multi-headed attention:
d_out = 2 # controls dimensionality of the context vectors
num_heads = 2

mha = MultiHeadAttention(
    d_in=d_in, d_out=d_out, context_length=num_tokens,
    dropout=0.0, num_heads=num_heads
)

context_vecs = mha(batch)

print(f"Context matrix shape: {context_vecs.shape}")
print(f"Context matrix:\n {context_vecs}")

# In [None]:
# embeddings and context:
EMBEDDING_DIM = 768
CONTEXT_LENGTH = 1024

# simulate an input sequence:
doc = torch.randn(CONTEXT_LENGTH, EMBEDDING_DIM)

# simulate a batch:
gpt_batch = torch.stack((doc, doc), dim=0)

# In [45]:
print(f"Doc shape: {doc.shape}")
print(f"Doc tensor: {doc}")

# In [46]:
print(f"Batch shape: {gpt_batch.shape}")
print(f"Batch tensor: {gpt_batch}")

# In [47]:
# GPT-2 has 12 attention heads:
NUM_HEADS = 12

# To keep 768 dimensionality as final output,
# OUT_DIM must be equal to NUM_HEADS * EMBEDDING_DIM
OUT_DIM = NUM_HEADS * EMBEDDING_DIM

# attention object:
mha = MultiHeadAttention(
    d_in=EMBEDDING_DIM, d_out=EMBEDDING_DIM, context_length=CONTEXT_LENGTH,
    dropout=0.0, num_heads=NUM_HEADS, qkv_bias=False
)

# compute:
context_vecs = mha(gpt_batch)

# inspect:
print(f"Context matrix shape: {context_vecs.shape}")
print(f"First batch context matrix:\n {context_vecs[0]}")
