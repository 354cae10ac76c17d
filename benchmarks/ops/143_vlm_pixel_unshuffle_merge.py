import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """The vision-language connector of an InternVL / Idefics3-style multimodal LLM, and the
    merge of image tokens into the text embeddings. Vision-encoder tokens (images x side^2 x
    vision_dim, the side read back from the token count in the forward) are laid out as a
    feature map, pixel_unshuffle folds each scale x scale neighbourhood into the channels
    (scale^2 fewer tokens), and an MLP projector (LayerNorm, Linear, GELU, Linear) maps them to
    the text width. The prompt's ids are embedded (placeholder ids first replaced by 0 with
    torch.where on the int tensor) and the projected image tokens are written, in order, into
    the positions holding the image placeholder id by masked_scatter with the expanded
    boolean mask. Returns the merged embeddings (batch, seq, text_dim) and the image-position
    mask."""
    def __init__(self, vocab, text_dim, vision_dim, scale, image_token_id):
        super().__init__()
        self.scale = scale
        self.image_token_id = image_token_id
        self.embed = nn.Embedding(vocab, text_dim)
        self.norm = nn.LayerNorm(vision_dim * scale * scale)
        self.fc1 = nn.Linear(vision_dim * scale * scale, text_dim)
        self.fc2 = nn.Linear(text_dim, text_dim)

    def forward(self, input_ids, vision_tokens):
        n, t, c = vision_tokens.shape
        side = int(round(t ** 0.5))
        fmap = vision_tokens.transpose(1, 2).reshape(n, c, side, side)
        fmap = F.pixel_unshuffle(fmap, self.scale)
        tokens = fmap.flatten(2).transpose(1, 2).reshape(-1, fmap.shape[1])
        image_embeds = self.fc2(F.gelu(self.fc1(self.norm(tokens))))
        is_image = input_ids == self.image_token_id
        text_embeds = self.embed(torch.where(is_image, 0, input_ids))
        mask = is_image.unsqueeze(-1).expand_as(text_embeds)
        return text_embeds.masked_scatter(mask, image_embeds.to(text_embeds.dtype)), is_image

batch = 4
images_per_sample = 2
grid = 16
scale = 2
vision_dim = 1024
text_dim = 2048
vocab = 32000
text_len = 300

def get_inputs():
    side = grid * scale
    n_image_tokens = images_per_sample * grid * grid
    seq = text_len + n_image_tokens
    image_token_id = vocab - 1
    ids = torch.randint(0, vocab - 1, (batch, seq))
    for i in range(batch):
        cuts = torch.sort(torch.randint(0, text_len + 1, (images_per_sample,))).values
        for j in range(images_per_sample):
            start = int(cuts[j]) + j * grid * grid
            ids[i, start:start + grid * grid] = image_token_id
    vision = torch.randn(batch * images_per_sample, side * side, vision_dim)
    return [ids, vision]

def get_init_inputs():
    return [vocab, text_dim, vision_dim, scale, vocab - 1]
