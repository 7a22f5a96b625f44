"""The reference trainer: MiniGoogLeNet on CIFAR-10 over every GPU, as in the multi-GPU Keras post.

Run it as ``envcheck train`` or ``python -m envcheck.train`` (the post ran ``python train.py
--output multi_gpu.png --gpus 4``). Modules, each readable on its own:

  config     the protocol (the post's, or the fast preset) and a run's settings
  data       CIFAR-10 from local python batches or the Keras cache; synthetic data
  image_folders  CIFAR-10 as folders of images or an archive of them
  model      MiniGoogLeNet and the on-device preprocessing
  pipeline   tf.data over uint8 images in memory
  schedule   the learning rate per epoch
  strategy   devices and the tf.distribute strategy
  callbacks  history, resume points, NaN stop, progress
  outputs    the output folder, written atomically
  plots      the post's loss/accuracy figure
  loop       the distributed loop for --multi-worker (Keras 3's fit() fails there)
  trainer    one run, start to finish

Importing this package does not import TensorFlow.
"""
