"""`model = torch.compile(model)` on a sequence classifier, then a forward with labels (the loss)."""
import torch
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
config = BertConfig(vocab_size=500, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=64, num_labels=3)
model = BertForSequenceClassification(config)
model = torch.compile(model)

batch = {
    "input_ids": torch.randint(0, config.vocab_size, (4, 12)),
    "attention_mask": torch.ones(4, 12, dtype=torch.long),
    "labels": torch.tensor([0, 2, 1, 0]),
}
outputs = model(**batch)
outputs.loss.backward()
print("loss", outputs.loss.item(), "logits", tuple(outputs.logits.shape))
