# The classes of the seed notebook "Coding Attention Mechanisms" (Raschka, chapter 3), as printed
# there, plus attnscope's exploration options as keyword arguments whose defaults reproduce it: causal,
# scale (divide by sqrt(d_k)) and causal_route ("tril": cells [26]-[28], see tril_route). `attnscope-cli
# pytorch` embeds this file in the scripts it prints; the oracle tests import it. It uses torch only.
import torch
import torch.nn as nn


# Section 3.3: no trainable weights.
def simple_attention(inputs, normalization="softmax", scale=False):
    attn_scores = inputs @ inputs.T
    if scale:
        attn_scores = attn_scores / inputs.shape[-1]**0.5
    if normalization == "sum":
        attn_weights = attn_scores / attn_scores.sum(dim=-1, keepdim=True)
    else:
        attn_weights = torch.softmax(attn_scores, dim=-1)
    context_vec = attn_weights @ inputs
    return context_vec


def tril_route(attn_weights):
    """Cells [26]-[28]: zero the weights of later keys (x tril), then renormalize each row."""
    n = attn_weights.shape[-1]
    masked_simple = attn_weights * torch.tril(torch.ones(n, n))
    row_sums = masked_simple.sum(dim=-1, keepdim=True)
    return masked_simple / row_sums


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out, causal=False, scale=True, causal_route="neg_inf"):
        super().__init__()
        self.causal, self.scale, self.causal_route = causal, scale, causal_route
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries = x @ self.W_query
        keys = x @ self.W_key
        values = x @ self.W_value
        attn_scores = queries @ keys.T
        if self.causal and self.causal_route == "neg_inf":
            n = attn_scores.shape[-1]
            attn_scores = attn_scores.masked_fill(
                torch.triu(torch.ones(n, n), diagonal=1).bool(), -torch.inf)
        d_k = keys.shape[-1] if self.scale else 1
        attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)
        if self.causal and self.causal_route == "tril":
            attn_weights = tril_route(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False, causal=False, scale=True, causal_route="neg_inf"):
        super().__init__()
        self.causal, self.scale, self.causal_route = causal, scale, causal_route
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.T
        if self.causal and self.causal_route == "neg_inf":
            n = attn_scores.shape[-1]
            attn_scores = attn_scores.masked_fill(
                torch.triu(torch.ones(n, n), diagonal=1).bool(), -torch.inf)
        d_k = keys.shape[-1] if self.scale else 1
        attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)
        if self.causal and self.causal_route == "tril":
            attn_weights = tril_route(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False,
                 causal=True, scale=True, causal_route="neg_inf"):
        super().__init__()
        self.d_out = d_out
        self.causal, self.scale, self.causal_route = causal, scale, causal_route
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask",
            torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        batch_size, num_tokens, d_in = x.shape
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        if self.causal and self.causal_route == "neg_inf":
            attn_scores.masked_fill_(
                self.mask.bool()[:num_tokens, :num_tokens], -torch.inf
            )
        d_k = keys.shape[-1] if self.scale else 1
        attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)
        if self.causal and self.causal_route == "tril":
            attn_weights = tril_route(attn_weights)
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False,
                 causal=True, scale=True, causal_route="neg_inf"):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias, causal, scale, causal_route)
             for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False,
                 causal=True, scale=True, causal_route="neg_inf"):
        super().__init__()
        assert (d_out % num_heads == 0), "Error: d_out must be divisible by num_heads!"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.causal, self.scale, self.causal_route = causal, scale, causal_route
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask",
            torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        batch_size, num_tokens, d_in = x.shape
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        queries = queries.view(batch_size, num_tokens, self.num_heads, self.head_dim)
        keys = keys.view(batch_size, num_tokens, self.num_heads, self.head_dim)
        values = values.view(batch_size, num_tokens, self.num_heads, self.head_dim)
        queries = queries.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        if self.causal and self.causal_route == "neg_inf":
            mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
            attn_scores.masked_fill_(mask_bool, -torch.inf)
        d_k = keys.shape[-1] if self.scale else 1
        attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)
        if self.causal and self.causal_route == "tril":
            attn_weights = tril_route(attn_weights)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(batch_size, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec
