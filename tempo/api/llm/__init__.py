"""The LLM library (API §6.5): Llama and the GPT-2 core over recurrent tensors, checkpoint
loaders for Meta's and Hugging Face's layouts, tokenizers, and EOS-bounded streaming decode."""
