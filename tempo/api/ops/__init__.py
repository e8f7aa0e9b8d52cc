"""Op families of RecurrentTensor, one module each (creation, elementwise, movement, ...)."""
