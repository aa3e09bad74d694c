import torch


def f(a):
    return a ** -2
