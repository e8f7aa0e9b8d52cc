"""A small shipped text the tiny demo/test tokenizer is trained on (written for Tempo)."""

CORPUS = """\
Once upon a time there was a small river that ran through a quiet valley. Every morning the
river sang to the stones, and every evening the stones listened. The farmers who lived by the
river said that the water knew the names of all the fish, and the fish knew the names of all
the birds. A young girl named Mira walked along the river each day. She counted the stones,
she watched the fish, and she wrote down what the birds said in a little blue book.
One day the river was silent. The stones waited, the fish hid under the reeds, and the birds
flew away to the hills. Mira asked the old miller why the river did not sing. The miller said
that rivers sing only when someone listens, and that the valley had become too busy to listen.
So Mira sat by the water from sunrise to sunset. On the third day she heard a single note, then
another, and soon the whole river was singing again. The farmers stopped their work, the fish
came out from the reeds, and the birds came back from the hills.
Tensors flow through time the way water flows through a valley. A model reads the tokens it
has seen, keeps their keys and values, and writes the next token. The next token depends on
the tokens before it, and the program that computes it is the same at every step. When the
model writes the end of the text, the sequence is finished and no more work is done for it.
The quick brown fox jumps over the lazy dog. Numbers like 1, 2, 3, 10, 42 and 2026 appear in
stories too. Questions end with a question mark? Exclamations end with an exclamation mark!
"""
