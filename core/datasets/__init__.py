"""Dataset bytes, shared by the API and the workers: ``uploads`` stores and inspects uploads,
``storage`` keeps them (local directory or object store), and ``fetch`` downloads https://
datasets without letting a URL reach internal hosts."""
